from .net import Encoder
