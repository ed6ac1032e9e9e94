from .base import BaseDecoder
from .seq_decoder import SeqDecoder
