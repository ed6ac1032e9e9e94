import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, d_model=256, nhead=8, depth=4, num_classes=5):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=1024, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.cls = nn.Linear(d_model, num_classes)

    def forward(self, x, mask=None):
        # x: (batch, seq, d_model)
        h = self.encoder(x, src_key_padding_mask=mask)
        h, _ = self.attn(h, h, h, key_padding_mask=mask)
        b, s, d = h.shape
        heads = h.view(b, s, 8, d // 8).permute(0, 2, 1, 3).contiguous().view(b * 8, s, d // 8)
        pooled = heads.mean(dim=1).reshape(b, -1)
        return self.cls(pooled[:, :d])


def nchw_to_nhwc(images):
    return images.permute(0, 2, 3, 1).reshape(images.size(0), -1)
