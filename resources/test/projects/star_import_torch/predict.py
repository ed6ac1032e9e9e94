"""Course-style script: everything comes from `from model import *`."""
from model import *

net = Net()
net.load_state_dict(torch.load("mnist_cnn.pt"))  # expect: torch-load-without-weights-only
net.eval()
loader = torch.utils.data.DataLoader(mnist(train=False), batch_size=256)
with torch.no_grad():
    correct = sum((net(x).argmax(1) == y).sum().item() for x, y in loader)
print(correct / len(loader.dataset))
