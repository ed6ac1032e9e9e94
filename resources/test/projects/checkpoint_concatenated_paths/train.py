import torch
import torch.nn as nn

CHECKPOINT_DIR = "checkpoints/"
MODEL_FILE = "classifier.pt"

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(5):
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    # The whole module, once per epoch and as the final file.
    torch.save(model, CHECKPOINT_DIR + "epoch_" + str(epoch) + "_" + MODEL_FILE)  # expect: torch-save-whole-model
torch.save(model, CHECKPOINT_DIR + MODEL_FILE)  # expect: torch-save-whole-model
