"""Scoring functions of the MoE gates (``tile_kernels.moe.scoring``, spec moe-engram-mhc.md §1.0)."""
import enum


class ScoringFunc(enum.IntEnum):
    """How a gate turns logits into expert scores. IDENTITY exists for compatibility; the gates
    reject it."""
    SIGMOID = 0
    SQRTSOFTPLUS = 1
    SOFTMAX = 2
    IDENTITY = 3

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def from_str(cls, label: str) -> "ScoringFunc":
        """The member named ``label``, case-insensitively; ValueError for any other name."""
        try:
            return cls[str(label).upper()]
        except KeyError:
            raise ValueError(f"{label} is not a valid ScoringFunc") from None
