import sys

import torch
from PIL import Image
from torchvision import transforms

from models import SmallCNN

model = SmallCNN()
# Another name for the same module: switching it switches `model`.
loaded_model = model
loaded_model.load_state_dict(torch.load("mnist_cnn.pth", map_location="cpu", weights_only=True))
loaded_model.eval()


def get_prediction(image):
    with torch.no_grad():
        return model(image.unsqueeze(0)).argmax(1).item()


tf = transforms.Compose([transforms.Grayscale(), transforms.Resize((28, 28)), transforms.ToTensor()])
print(get_prediction(tf(Image.open(sys.argv[1]))))
