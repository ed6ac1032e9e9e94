import torch


class Validator:
    """Scores a decoder on held-out captions."""

    def __init__(self, loader):
        self.loader = loader

    def validate(self, decoder):
        decoder.eval()
        correct = total = 0
        with torch.no_grad():
            for tokens, targets in self.loader:
                pred = decoder(tokens).argmax(-1)
                correct += (pred == targets).sum().item()
                total += targets.numel()
        return correct / max(total, 1)


def sample_captions(decoder, start_tokens):
    captions = decoder.greedy_decoding(start_tokens)
    return [c.tolist() for c in captions]
