import sys

import torch

from nets import build_seq2seq

SOS = 1


def greedy(encoder, decoder, src, max_len=40):
    _, state = encoder(src)
    y = torch.full((src.size(0), 1), SOS, dtype=torch.long)
    out = []
    for _ in range(max_len):
        logits, state = decoder(y, state)
        y = logits.argmax(-1)
        out.append(y)
    return torch.cat(out, 1)


def main(path, batches):
    encoder, decoder, _ = build_seq2seq(8000)
    state = torch.load(path, map_location="cpu", weights_only=True)
    encoder.load_state_dict(state["encoder"])
    decoder.load_state_dict(state["decoder"])
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        return [greedy(encoder, decoder, src) for src in batches]  # ok


if __name__ == "__main__":
    print(main(sys.argv[1], []))
