"""Signal receivers of refinement (connected in MemoryConfig.ready)."""

from memory.refinement.services import on_batch_reverted
from memory.services import batch_reverted

batch_reverted.connect(on_batch_reverted, dispatch_uid="refinement_run_reverted")
