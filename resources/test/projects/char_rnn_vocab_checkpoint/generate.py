import argparse

import torch

from model import CharLSTM


@torch.no_grad()
def sample(model, vocab, prompt, length=500, temperature=0.8):
    model.eval()
    x = torch.tensor([vocab.encode(prompt)])
    out, state = [], None
    for _ in range(length):
        logits, state = model(x, state)
        probs = torch.softmax(logits[0, -1] / temperature, dim=-1)
        nxt = torch.multinomial(probs, 1).item()
        out.append(nxt)
        x = torch.tensor([[nxt]])
    return prompt + vocab.decode(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt", default="char_lstm.pt")
    p.add_argument("--prompt", default="The ")
    args = p.parse_args()
    ckpt = torch.load(args.ckpt, map_location="cpu", weights_only=True)  # expect: checkpoint-fails-weights-only-load
    vocab = ckpt["vocab"]
    model = CharLSTM(len(vocab))
    model.load_state_dict(ckpt["model"])
    print(sample(model, vocab, args.prompt))


if __name__ == "__main__":
    main()
