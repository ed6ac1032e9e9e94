import sys

import torch

from model import Decoder, Encoder, Tagger

SOS, EOS = 1, 2


def load_model(path, src_vocab, tgt_vocab):
    enc = Encoder(src_vocab)
    dec = Decoder(tgt_vocab)
    state = torch.load(path, map_location="cpu", weights_only=True)
    enc.load_state_dict(state["enc"])
    dec.load_state_dict(state["dec"])
    return enc, dec


def run_model(enc, dec, batch, max_len=50):
    _, h = enc(batch)  # expect: missing-eval-mode
    y = torch.full((batch.size(0), 1), SOS, dtype=torch.long)
    out = []
    for _ in range(max_len):
        logits, h = dec(y, h)  # expect: eval-without-no-grad
        y = logits.argmax(-1)
        out.append(y)
    return torch.cat(out, 1)


def tag(tagger, batch):
    return tagger(batch).argmax(-1)  # ok


def predict(path, batches):
    enc = Encoder(1000)
    dec = Decoder(1000)
    enc.load_state_dict(torch.load(path, map_location="cpu", weights_only=True)["enc"])
    dec.load_state_dict(torch.load(path, map_location="cpu", weights_only=True)["dec"])
    tagger = Tagger(1000)
    results = []
    for batch in batches:
        results.append(run_model(enc, dec, batch))
        results.append(tag(tagger, batch))
    return results


if __name__ == "__main__":
    print(predict(sys.argv[1], []))
