import torch
import torch.nn as nn
from torchvision.models import vgg19


class VGG19Encoder(nn.Module):
    """The convolutional part of a pretrained VGG19, frozen: a fixed feature extractor."""

    def __init__(self):
        super().__init__()
        self.vgg19 = vgg19(weights="IMAGENET1K_V1")
        self.vgg19 = self.vgg19.features[:-1]
        for param in self.vgg19.parameters():
            param.requires_grad = False

    def forward(self, images):
        maps = self.vgg19(images)
        return maps.flatten(2).permute(0, 2, 1), maps.mean(dim=(2, 3))


class LSTMDecoder(nn.Module):
    def __init__(self, vocab_size, embed_dim=256, hidden=512):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.init_h = nn.Linear(512, hidden)
        self.lstm = nn.LSTMCell(embed_dim + 512, hidden)
        self.dropout = nn.Dropout(0.5)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, feature_maps, feature_mean, captions):
        h = self.init_h(feature_mean)
        c = torch.zeros_like(h)
        logits = []
        for t in range(captions.size(1)):
            x = torch.cat([self.embed(captions[:, t]), feature_mean], dim=1)
            h, c = self.lstm(x, (h, c))
            logits.append(self.out(self.dropout(h)))
        return torch.stack(logits, dim=1)

    @torch.no_grad()
    def greedy_decoding(self, feature_maps, feature_mean, start, end, max_len=20):
        self.eval()
        h = self.init_h(feature_mean)
        c = torch.zeros_like(h)
        word = torch.full((feature_mean.size(0),), start, dtype=torch.long)
        words = []
        for _ in range(max_len):
            x = torch.cat([self.embed(word), feature_mean], dim=1)
            h, c = self.lstm(x, (h, c))
            word = self.out(h).argmax(-1)
            words.append(word)
            if (word == end).all():
                break
        return torch.stack(words, dim=1)
