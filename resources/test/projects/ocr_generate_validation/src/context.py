from dataclasses import dataclass

from torch.utils.data import DataLoader
from transformers import TrOCRProcessor, VisionEncoderDecoderModel


@dataclass
class Context:
    model: VisionEncoderDecoderModel
    processor: TrOCRProcessor
    train_dataloader: DataLoader
    val_dataloader: DataLoader
