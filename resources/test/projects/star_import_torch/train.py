from model import *

net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(mnist(), batch_size=64, shuffle=True)
for epoch in range(3):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
torch.save(net.state_dict(), "mnist_cnn.pt")
