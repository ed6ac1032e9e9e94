"""Training loops shared by the scripts: the optimizer comes in as a parameter."""


def fit(model, loader, optimizer, accum_steps):
    model.train()
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()  # ok: train.py passes AdamW, whose step does not depend on the gradient scale
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def finetune(model, loader, optimizer, accum_steps):
    model.train()
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()  # expect: grad-accum-loss-not-scaled
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
