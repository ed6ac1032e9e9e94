from .loaders import build_train_loader
