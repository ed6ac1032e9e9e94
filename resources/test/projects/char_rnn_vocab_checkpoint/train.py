import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from model import CharLSTM
from vocab import CharVocab


class Chunks(Dataset):
    def __init__(self, ids, seq_len):
        self.ids = torch.tensor(ids)
        self.seq_len = seq_len

    def __len__(self):
        return (len(self.ids) - 1) // self.seq_len

    def __getitem__(self, i):
        s = i * self.seq_len
        return self.ids[s:s + self.seq_len], self.ids[s + 1:s + self.seq_len + 1]


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    losses = []
    for x, y in loader:
        logits, _ = model(x)
        losses.append(F.cross_entropy(logits.flatten(0, 1), y.flatten()).item())
    model.train()
    return sum(losses) / len(losses)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("corpus")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--ckpt", default="char_lstm.pt")
    args = p.parse_args()

    with open(args.corpus, encoding="utf-8") as f:
        text = f.read()
    vocab = CharVocab(text)
    ids = vocab.encode(text)
    split = int(0.9 * len(ids))
    train_loader = DataLoader(Chunks(ids[:split], args.seq_len), batch_size=64, shuffle=True, drop_last=True)
    val_loader = DataLoader(Chunks(ids[split:], args.seq_len), batch_size=64, shuffle=True)  # expect: eval-loader-shuffled

    model = CharLSTM(len(vocab))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)  # expect: scheduler-never-stepped
    model.train()
    for epoch in range(args.epochs):
        for x, y in train_loader:
            logits, _ = model(x)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        print(f"epoch {epoch}: train {loss.item():.3f} val {evaluate(model, val_loader):.3f}")
        torch.save({"model": model.state_dict(), "vocab": vocab, "optimizer": optimizer, "epoch": epoch}, args.ckpt)


if __name__ == "__main__":
    main()
