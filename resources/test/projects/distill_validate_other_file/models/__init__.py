from .student import StudentNet
from .teacher import load_teacher

__all__ = ["StudentNet", "load_teacher"]
