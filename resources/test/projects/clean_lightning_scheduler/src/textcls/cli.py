import argparse

import lightning as L

from textcls import TextClassifier
from textcls.data import AGNewsData


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--precision", default="16-mixed")
    args = p.parse_args()
    L.seed_everything(0)
    trainer = L.Trainer(max_epochs=args.epochs, precision=args.precision, gradient_clip_val=1.0)
    trainer.fit(TextClassifier(), datamodule=AGNewsData())


if __name__ == "__main__":
    main()
