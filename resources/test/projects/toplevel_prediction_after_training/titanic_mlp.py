import pandas as pd
import torch
import torch.nn as nn

from models import MLP

train_df = pd.read_csv("data/train.csv")
test_df = pd.read_csv("data/test.csv")
X_train = torch.tensor(train_df.drop(columns=["Survived"]).values, dtype=torch.float32)
y_train = torch.tensor(train_df["Survived"].values)
X_test = torch.tensor(test_df.drop(columns=["Survived"]).values, dtype=torch.float32)
y_test = torch.tensor(test_df["Survived"].values)

model = MLP(X_train.shape[1], 64, 2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(200):
    optimizer.zero_grad()
    outputs = model(X_train)
    loss = criterion(outputs, y_train)
    loss.backward()
    optimizer.step()
    if epoch % 20 == 0:
        print(epoch, loss.item())

y_pred = model(X_test)  # expect: missing-eval-mode
accuracy = (y_pred.argmax(dim=1) == y_test).float().mean()
print(f"test accuracy: {accuracy.item():.3f}")
