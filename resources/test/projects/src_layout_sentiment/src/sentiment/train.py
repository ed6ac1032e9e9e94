import argparse
import logging

import torch
from torch import nn
from torch.utils.data import DataLoader
from tqdm import tqdm

from sentiment.data import ReviewDataset, Vocab, make_collate
from sentiment.model import ReviewClassifier

logger = logging.getLogger(__name__)


def run_epoch(model, loader, criterion, optimizer, device):
    model.train()
    total = 0.0
    for tokens, offsets, labels in tqdm(loader, desc="train"):
        tokens, offsets, labels = tokens.to(device), offsets.to(device), labels.to(device)
        probs = model(tokens, offsets)
        loss = criterion(probs, labels)  # expect: bce-with-logits-on-probabilities
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def accuracy(model, loader, device):
    model.eval()
    correct = seen = 0
    for tokens, offsets, labels in loader:
        preds = (model(tokens.to(device), offsets.to(device)) > 0.5).float()  # ok: threshold on probabilities
        correct += (preds.cpu() == labels).sum().item()
        seen += labels.numel()
    return correct / seen


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sentiment-train")
    parser.add_argument("--train", required=True)
    parser.add_argument("--valid", required=True)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set, valid_set = ReviewDataset(args.train), ReviewDataset(args.valid)
    vocab = Vocab(train_set.texts)
    collate = make_collate(vocab)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, collate_fn=collate)
    valid_loader = DataLoader(valid_set, batch_size=256, collate_fn=collate)

    model = ReviewClassifier(len(vocab)).to(device)
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        loss = run_epoch(model, train_loader, criterion, optimizer, device)
        acc = accuracy(model, valid_loader, device)
        logger.info("epoch %d loss %.4f valid acc %.4f", epoch, loss, acc)
    torch.save(model.state_dict(), "review_classifier.pt")


if __name__ == "__main__":
    main()
