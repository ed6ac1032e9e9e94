import torch

from nmt.models import LanguageModel, Seq2Seq


def load(path, vocab):
    model = Seq2Seq(vocab)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model


def translate(model, src):
    model.eval()
    return model.generate(src)  # ok: Seq2Seq.generate turns autograd off itself


@torch.inference_mode()
def complete(lm, prompt):
    lm.eval()
    return lm.generate(prompt)  # ok


def main():
    model = load("seq2seq.pt", 32000)
    src = torch.load("batch.pt", weights_only=True)
    print(translate(model, src))
    lm = LanguageModel(32000)
    print(complete(lm, src))


if __name__ == "__main__":
    main()
