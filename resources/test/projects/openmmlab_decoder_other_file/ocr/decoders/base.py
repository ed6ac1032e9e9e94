from mmengine.model import BaseModule


class BaseDecoder(BaseModule):
    """Dispatches to `forward_train` or `forward_test`: the framework's loops pick the mode
    (its validation and test loops run under `torch.no_grad()`)."""

    def forward(self, feat, targets=None, mode="loss"):
        if mode == "loss":
            return self.forward_train(feat, targets)
        return self.forward_test(feat)
