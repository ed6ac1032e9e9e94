import torch

from nmt.models import Seq2Seq


def load(path, vocab):
    model = Seq2Seq(vocab)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model


def translate(model, src):
    model.eval()
    return model.generate(src)  # expect: eval-without-no-grad


def main():
    model = load("seq2seq.pt", 32000)
    src = torch.load("batch.pt", weights_only=True)
    print(translate(model, src))


if __name__ == "__main__":
    main()
