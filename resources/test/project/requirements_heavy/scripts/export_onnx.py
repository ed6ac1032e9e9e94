import torch
from src.models.net import Encoder

if __name__ == "__main__":
    model = Encoder().eval()
    torch.onnx.export(model, torch.randn(1, 64), "encoder.onnx")
