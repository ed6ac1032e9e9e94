"""The older tutorial form seen in Kaggle kernels: the phases come in as a parameter and the
model is switched with `train(True)` / `train(False)`."""
import torch


def train_model(model, loss_fn, optimizer, scheduler, loaders, sizes, phases, num_epochs=25):
    best_acc = 0.0
    for epoch in range(num_epochs):
        for phase in phases:
            if phase == "train":
                scheduler.step()
                model.train(True)
            else:
                model.train(False)
            corrects = 0
            for inputs, labels in loaders[phase]:
                optimizer.zero_grad()
                outputs = model(inputs)  # expect: eval-without-no-grad
                loss = loss_fn(outputs, labels)
                if phase == "train":
                    loss.backward()
                    optimizer.step()
                corrects += (outputs.argmax(1) == labels).sum().item()
            if phase == "valid" and corrects / sizes[phase] > best_acc:
                best_acc = corrects / sizes[phase]
    return model


def fit_stages(model, loss_fn, optimizer, loaders, stages):
    # ok: the stages are not phases of training and evaluation (no phase literal to compare)
    for stage in stages:
        for inputs, labels in loaders[stage]:
            optimizer.zero_grad()
            loss_fn(model(inputs), labels).backward()
            optimizer.step()
