import torch


def make_train_step_fn(model, loss_fn, optimizer):
    def perform_train_step_fn(x, y):
        model.train()
        yhat = model(x)
        loss = loss_fn(yhat, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()

    return perform_train_step_fn


def make_val_step_fn(model, loss_fn):
    def perform_val_step_fn(x, y):
        model.eval()
        yhat = model(x)
        loss = loss_fn(yhat, y)
        return loss.item()

    return perform_val_step_fn


def make_error_step_fn(model):
    def perform_error_step_fn(x, y):
        model.eval()
        yhat = model(x)  # expect: eval-without-no-grad
        return torch.abs(yhat - y).mean().item()

    return perform_error_step_fn
