import numpy as np
import torch


class ClickController:
    """Turns the user's clicks into object masks, one object at a time."""

    def __init__(self, net, num_objects, device="cuda"):
        self.net = net.eval()
        self.num_objects = num_objects
        self.device = device

    def interact(self, image, prev_mask, clicks):
        image = image.to(self.device)
        h, w = image.shape[-2:]
        masks = torch.zeros((self.num_objects, h, w), device=self.device)
        for k in range(1, self.num_objects + 1):
            pos = torch.from_numpy((clicks == k).astype(np.uint8)).float()
            neg = torch.from_numpy((clicks != k).astype(np.uint8)).float()
            inputs = torch.cat([image, (prev_mask == k).float(), pos[None, None], neg[None, None]], 1)
            masks[k - 1] = torch.sigmoid(self.net(inputs))[0, 1]  # ok: the demo turned autograd off
        return masks
