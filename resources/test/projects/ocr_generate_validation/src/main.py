import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import TrOCRProcessor, VisionEncoderDecoderModel

from .context import Context
from .scripts import predict, train


class TrocrPredictor:
    def __init__(self, checkpoint="microsoft/trocr-base-handwritten"):
        self.processor = TrOCRProcessor.from_pretrained(checkpoint)
        self.model = VisionEncoderDecoderModel.from_pretrained(checkpoint)

    def predict_images(self, dataloader: DataLoader):
        return predict(self.processor, self.model, dataloader)


def main():
    torch.manual_seed(0)
    processor = TrOCRProcessor.from_pretrained("microsoft/trocr-base-handwritten")
    model = VisionEncoderDecoderModel.from_pretrained("microsoft/trocr-base-handwritten")
    data = TensorDataset(torch.randn(32, 3, 384, 384), torch.randint(0, 100, (32, 16)))
    train_loader = DataLoader(data, batch_size=4, shuffle=True)
    context = Context(model, processor, train_loader, DataLoader(data, batch_size=4))
    train(context)


if __name__ == "__main__":
    main()
