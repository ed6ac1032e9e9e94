import torch


def build_optimizers(model, cfg):
    """Small LR + momentum for the pretrained backbone, Adam for the new head."""
    backbone = torch.optim.SGD(model.backbone.parameters(), lr=cfg["backbone_lr"], momentum=0.9,
                               weight_decay=cfg["weight_decay"])
    head = torch.optim.Adam(model.head.parameters(), lr=cfg["head_lr"])
    return [backbone, head]
