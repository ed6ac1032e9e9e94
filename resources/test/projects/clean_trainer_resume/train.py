import argparse
import logging
import os

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from model import TransformerClassifier
from trainer import Trainer


def collate(batch):
    tokens, labels = zip(*batch)
    return pad_sequence([t[:512] for t in tokens], batch_first=True), torch.tensor(labels)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/agnews.pt", help="tensors prepared by prepare.py")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--ckpt", default="runs/agnews/last.pt")
    p.add_argument("--resume", action="store_true")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.load(args.data, map_location="cpu", weights_only=True)
    train_loader = DataLoader(list(zip(data["train_tokens"], data["train_labels"])), batch_size=64,
                              shuffle=True, collate_fn=collate)
    val_loader = DataLoader(list(zip(data["val_tokens"], data["val_labels"])), batch_size=256,
                            collate_fn=collate)

    model = TransformerClassifier(data["vocab_size"], data["num_classes"]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    trainer = Trainer(model, optimizer, scheduler, device, args)
    if args.resume and os.path.exists(args.ckpt):
        trainer.resume(args.ckpt)
    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    trainer.fit(train_loader, val_loader, args.epochs, args.ckpt)


if __name__ == "__main__":
    main()
