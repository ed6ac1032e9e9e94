"""A hand-written check outside the framework's loops: autograd stays on here."""
from ocr.decoders import SeqDecoder

decoder = SeqDecoder()


def evaluate(val_loader):
    decoder.eval()
    correct = 0
    for feat, target in val_loader:
        pred = decoder(feat, mode="predict")  # expect: eval-without-no-grad
        correct += (pred.argmax(-1) == target).sum().item()
    return correct
