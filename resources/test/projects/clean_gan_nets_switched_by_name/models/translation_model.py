import torch

from . import networks
from .base_model import BaseModel


class TranslationModel(BaseModel):
    def __init__(self, opt):
        super().__init__(opt)
        self.model_names = ["G_A", "G_B"]
        self.netG_A = networks.define_generator(opt)
        self.netG_B = networks.define_generator(opt)

    def set_input(self, batch):
        self.real_A = batch["A"]
        self.real_B = batch["B"]

    def test(self):
        with torch.no_grad():
            self.fake_B = self.netG_A(self.real_A)  # ok: BaseModel.eval() switches the nets by name
            self.fake_A = self.netG_B(self.real_B)  # ok
            self.rec_A = self.netG_B(self.fake_B)  # ok
