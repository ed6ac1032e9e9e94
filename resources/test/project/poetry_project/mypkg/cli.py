import lightning as L
from mypkg.module import Classifier


def train():
    trainer = L.Trainer(accelerator="gpu", devices=1)
    trainer.fit(Classifier())
