import torch
import torch.nn as nn

from model import SmallCNN

images, targets = torch.load("digits_train.pt")  # expect: torch-load-without-weights-only
test_images, test_targets = torch.load("digits_test.pt")  # expect: torch-load-without-weights-only
model = SmallCNN(num_classes=10)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(20):
    model.train()
    for i in range(0, len(images), 64):
        output = model(images[i : i + 64])
        loss = criterion(output, targets[i : i + 64])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

# One test image. The name `output` is reused: the training loop's loss above read another value.
img = test_images[6].unsqueeze(0)
model.eval()
output = model(img)  # expect: eval-without-no-grad
_, predicted = torch.max(output, 1)
print(f"prediction: {predicted.item()}, actual: {test_targets[6].item()}")
