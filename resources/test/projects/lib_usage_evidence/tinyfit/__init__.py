"""fit(model, optimizer, loss_fn, train_loader, val_loader) and friends."""
from .callbacks import EarlyStopping, History
from .loops import evaluate, fit

__all__ = ["fit", "evaluate", "History", "EarlyStopping"]
__version__ = "0.4.0"
