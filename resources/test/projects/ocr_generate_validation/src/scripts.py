import torch
from torch.utils.data import DataLoader
from transformers import TrOCRProcessor, VisionEncoderDecoderModel

from .context import Context


def predict(processor: TrOCRProcessor, model: VisionEncoderDecoderModel, dataloader: DataLoader):
    output = []
    with torch.no_grad():
        for batch in dataloader:
            generated_ids = model.generate(batch["input"])  # expect: missing-eval-mode
            output.extend(processor.batch_decode(generated_ids, skip_special_tokens=True))
    return output


def validate(context: Context):
    predictions = predict(context.processor, context.model, context.val_dataloader)
    return sum(len(p) for p in predictions) / max(len(predictions), 1)


def train(context: Context, epochs: int = 3):
    model = context.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    for epoch in range(epochs):
        model.train()
        for batch in context.train_dataloader:
            loss = model(pixel_values=batch["input"], labels=batch["label"]).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, validate(context))
    model.save_pretrained("trocr-finetuned")
