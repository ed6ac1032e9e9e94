import pytorch_lightning as pl
import torch
import torch.nn.functional as F

from models import ClassificationHead, ConvBackbone


class LitClassifier(pl.LightningModule):
    def __init__(self, num_classes=10, lr=1e-3, weight_decay=0.05, max_epochs=30):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = ConvBackbone()
        self.head = ClassificationHead(self.backbone.out_features, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)  # expect: cross-entropy-after-softmax
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        probs = self(x)
        loss = F.cross_entropy(probs, y)  # expect: cross-entropy-after-softmax
        acc = (probs.argmax(dim=-1) == y).float().mean()  # ok: accuracy from probabilities
        self.log_dict({"val/loss": loss, "val/acc": acc}, prog_bar=True)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=self.hparams.max_epochs)  # ok: Lightning steps it
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"}}
