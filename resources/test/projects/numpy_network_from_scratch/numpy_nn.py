"""A two-layer network written with NumPy only, the way a course builds one before PyTorch."""
import numpy as np

from data import load_split


class NeuralNetwork:
    def __init__(self, lr, n_in, n_hidden):
        self.lr = lr
        self.w1 = np.random.randn(n_in, n_hidden) * 0.1
        self.w2 = np.random.randn(n_hidden, 1) * 0.1

    def forward(self, x):
        self.h = np.maximum(0, x @ self.w1)
        return 1 / (1 + np.exp(-(self.h @ self.w2)))

    def backward(self, x, y_true, y_pred):
        d_out = (y_pred - y_true) * y_pred * (1 - y_pred)
        self.w2 -= self.lr * self.h.T @ d_out
        d_h = (d_out @ self.w2.T) * (self.h > 0)
        self.w1 -= self.lr * x.T @ d_h

    def train(self, x, y, iterations):
        for _ in range(iterations):
            y_pred = self.forward(x)
            self.backward(x, y, y_pred)


x_train, y_train, x_test, y_test = load_split()
nn = NeuralNetwork(lr=0.1, n_in=x_train.shape[1], n_hidden=16)
nn.train(x_train, y_train, iterations=500)

correct = 0
for i in range(len(x_test)):
    y_pred = np.round(nn.forward(x_test[i]))  # ok: NumPy, no autograd graph
    correct += int(y_pred == y_test[i])
print("test accuracy", correct / len(x_test))
