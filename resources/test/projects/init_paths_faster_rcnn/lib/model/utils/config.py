from easydict import EasyDict as edict

__C = edict()
cfg = __C

__C.TRAIN = edict()
__C.TRAIN.LEARNING_RATE = 0.001
__C.TRAIN.MOMENTUM = 0.9
__C.TRAIN.BATCH_SIZE = 128
__C.POOLING_SIZE = 7
__C.NUM_CLASSES = 21
