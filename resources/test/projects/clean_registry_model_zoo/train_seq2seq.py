import torch
import torch.nn.functional as F

from nets import build_seq2seq


def train(pairs, epochs=5):
    encoder, decoder, optimizer = build_seq2seq(8000)
    encoder.train()
    decoder.train()
    for epoch in range(epochs):
        for src, tgt in pairs:
            optimizer.zero_grad()
            _, state = encoder(src)
            logits, _ = decoder(tgt[:, :-1], state)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
    torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict()}, "s2s.pt")
