MODEL_PATH = "checkpoints/flowers_mobilenet.pt"
DATA_ROOT = "data/flowers"
IMAGE_SIZE = 224
BATCH_SIZE = 64
EPOCHS = 12
LR = 3e-4
