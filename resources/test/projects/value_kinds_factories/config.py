CONFIG = {
    "train_dir": "data/xray/train",
    "val_dir": "data/xray/val",
    "num_classes": 3,
    "batch_size": 16,
    "lr": 1e-4,
    "patience": 2,
    "epochs": 25,
    "save_path": "densenet_xray.pt",
}
