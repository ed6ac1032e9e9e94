import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, get_cosine_schedule_with_warmup


class TextClassifier(L.LightningModule):
    def __init__(self, model_name="bert-base-uncased", num_labels=4, lr=2e-5, warmup_ratio=0.1):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = AutoModel.from_pretrained(model_name)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(self.encoder.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        return self.classifier(self.dropout(hidden))  # logits

    def training_step(self, batch, batch_idx):
        logits = self(batch["input_ids"], batch["attention_mask"])
        loss = F.cross_entropy(logits, batch["labels"])  # ok: logits
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        logits = self(batch["input_ids"], batch["attention_mask"])  # ok: Lightning switches to eval and no_grad
        self.log("val_loss", F.cross_entropy(logits, batch["labels"]), prog_bar=True)
        self.log("val_acc", (logits.argmax(-1) == batch["labels"]).float().mean(), prog_bar=True)

    def predict_step(self, batch, batch_idx):
        return torch.softmax(self(batch["input_ids"], batch["attention_mask"]), dim=-1)  # ok: probabilities for output only

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01)
        total = self.trainer.estimated_stepping_batches
        scheduler = get_cosine_schedule_with_warmup(optimizer, int(self.hparams.warmup_ratio * total), total)  # ok: Lightning steps it
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]
