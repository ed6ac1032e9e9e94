import torch

from model import SmallCNN

model = SmallCNN()
model.load_state_dict(torch.load("cnn.pt", map_location="cpu", weights_only=True))
model.eval()

# The hook's own `out` is the layer's output, not the `out` of the forward pass below.
feature_maps = {}
model.conv2.register_forward_hook(lambda module, inputs, out: feature_maps.update(conv2=out))
image = torch.load("image.pt")  # expect: torch-load-without-weights-only
out = model(image)  # expect: eval-without-no-grad
print(out.softmax(1), feature_maps["conv2"].shape)
