import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab_size=32, emb_dim=16):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, emb_dim)
        self.out_head = nn.Linear(emb_dim, vocab_size, bias=False)

    def forward(self, idx):
        return self.out_head(self.tok_emb(idx))


def generate(model, idx, max_new_tokens):
    model.eval()
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(idx)
        idx = torch.cat((idx, logits[:, -1].argmax(-1, keepdim=True)), dim=1)
    return idx
