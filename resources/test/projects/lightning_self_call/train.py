import argparse

import pytorch_lightning as pl
from pytorch_lightning.callbacks import LearningRateMonitor, ModelCheckpoint

from datamodule import CIFARDataModule
from lit_module import LitClassifier


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()

    pl.seed_everything(42)
    dm = CIFARDataModule(batch_size=args.batch_size)
    model = LitClassifier(lr=args.lr, max_epochs=args.epochs)
    trainer = pl.Trainer(
        max_epochs=args.epochs,
        accelerator="auto",
        callbacks=[ModelCheckpoint(monitor="val/acc", mode="max"), LearningRateMonitor("epoch")],
    )
    trainer.fit(model, datamodule=dm)


if __name__ == "__main__":
    main()
