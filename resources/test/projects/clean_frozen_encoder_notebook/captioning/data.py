import torch


class Vocabulary:
    def __init__(self, words):
        self.words = ["<pad>", "<start>", "<end>"] + list(words)
        self.start, self.end = 1, 2

    def __len__(self):
        return len(self.words)

    def decode(self, ids):
        return " ".join(self.words[i] for i in ids if i > 2)


vocabulary = Vocabulary(["a", "dog", "on", "the", "grass"])
val_images = [torch.rand(3, 224, 224) for _ in range(4)]
