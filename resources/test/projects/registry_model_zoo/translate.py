import sys

import torch

from models.seq2seq import load_model

SOS = 1


def translate(path, batches, max_len=40):
    encoder, decoder = load_model(path, 8000, 8000)
    results = []
    with torch.no_grad():
        for src in batches:
            _, h = encoder(src)  # expect: missing-eval-mode
            y = torch.full((src.size(0), 1), SOS, dtype=torch.long)
            out = []
            for _ in range(max_len):
                logits, h = decoder(y, h)  # expect: missing-eval-mode
                y = logits.argmax(-1)
                out.append(y)
            results.append(torch.cat(out, 1))
    return results


if __name__ == "__main__":
    print(translate(sys.argv[1], []))
