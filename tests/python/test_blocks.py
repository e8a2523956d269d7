"""Placement through popc.poptorch: BeginBlock, Block, BlockFunction,
Stage and the execution strategies become popc's block, IPU and stage
annotations on the traced nodes; a 2-IPU pipelined model trains as
PyTorch does, and the pipeline's rule is PopTorch's."""
import copy
import unittest

import torch

import popc.poptorch as poptorch
from popc import _lib
from popc.poptorch import _marks
from common import cpu_options, main


class TwoStage(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x, target):
        out = self.fc2(torch.relu(self.fc1(x)))
        return out, torch.nn.functional.cross_entropy(out, target)


def placement(pm):
    """{node name: (block, ipu, stage)} of the compiled model's graph."""
    g = _lib.core.popc_model_graph(pm._popc.handle)
    out = {}
    for n in range(_lib.core.popc_graph_n_nodes(g)):
        name = _lib.core.popc_graph_node_name(g, n).decode()
        a = _lib.core.popc_graph_node_annotations(g, n)
        out[name] = (a.block.decode() if a.block else None, a.ipu, a.stage)
    return out


def gemms(places):
    return {n.split("/")[-2]: v for n, v in places.items()
            if n.endswith("Gemm") and "Grad" not in n}


class Blocks(unittest.TestCase):
    def train_pipelined(self, model, opts, steps=3):
        torch.manual_seed(0)
        reference = copy.deepcopy(model)
        pm = poptorch.trainingModel(model, options=opts,
                                    optimizer=torch.optim.SGD(
                                        model.parameters(), lr=0.1))
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(5)
        for _ in range(steps):
            x = torch.randn(12, 6, generator=g)
            y = torch.randint(0, 3, (12,), generator=g)
            _, loss = pm(x, y)
            ref_opt.zero_grad()
            ref_loss = 0.0
            for m in range(3):     # 3 accumulated micro-batches of 4
                _, l = reference(x[m * 4:(m + 1) * 4], y[m * 4:(m + 1) * 4])
                (l / 3).backward()
                ref_loss = l
            ref_opt.step()
            self.assertLessEqual(abs(float(loss) - float(ref_loss)), 1e-5)
        return pm

    def test_begin_block_two_ipus_pipelined(self):
        torch.manual_seed(0)
        model = TwoStage()
        model.fc2 = poptorch.BeginBlock(model.fc2, "second", ipu_id=1)
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(3)
        pm = self.train_pipelined(model, opts)
        g = gemms(placement(pm))
        self.assertEqual(g["fc1"][:2], (None, -1), "before any block")
        self.assertEqual(g["fc2"][:2], ("second", 1))
        # pipelining 2 stages needs GA >= 3 (PopTorch's rule)
        bad = TwoStage()
        bad.fc2 = poptorch.BeginBlock(bad.fc2, "second", ipu_id=1)
        pm = poptorch.trainingModel(bad, options=poptorch.Options())
        with self.assertRaises(poptorch.Error) as cm:
            pm(torch.randn(4, 6), torch.randint(0, 3, (4,)))
        self.assertIn("gradientAccumulation", str(cm.exception))
        poptorch.removeBlocks(bad)
        self.assertNotIn("_popc_begin_block", bad.fc2.__dict__)

    def test_block_context_and_stages_sharded(self):
        class WithBlocks(TwoStage):
            def forward(self, x, target):
                with poptorch.Block("A"):
                    h = torch.relu(self.fc1(x))
                with poptorch.Block("B"):
                    out = self.fc2(h)
                return out, torch.nn.functional.cross_entropy(out, target)

        torch.manual_seed(0)
        opts = cpu_options()
        opts.Training.gradientAccumulation(3)
        opts.setExecutionStrategy(poptorch.ShardedExecution(
            poptorch.Stage("A").ipu(0), poptorch.Stage("B").ipu(1)))
        pm = self.train_pipelined(WithBlocks(), opts)
        g = gemms(placement(pm))
        self.assertEqual(g["fc1"], ("A", 0, 0))
        self.assertEqual(g["fc2"], ("B", 1, 1))

    def test_block_function_and_auto_stage(self):
        class WithFunction(TwoStage):
            def forward(self, x, target):
                @poptorch.BlockFunction("F", ipu_id=1)
                def head(h):
                    return self.fc2(h)
                out = head(torch.relu(self.fc1(x)))
                return out, torch.nn.functional.cross_entropy(out, target)

        opts = cpu_options()
        opts.Training.gradientAccumulation(3)
        opts.setExecutionStrategy(poptorch.PipelinedExecution(
            poptorch.AutoStage.AutoIncrement))
        self.assertEqual(opts.toDict()["setExecutionStrategy.autoStage"],
                         "AutoIncrement")
        pm = self.train_pipelined(WithFunction(), opts)
        self.assertEqual(gemms(placement(pm))["fc2"][:2], ("F", 1))

    def test_serial_phased_execution(self):
        class WithBlocks(TwoStage):
            def forward(self, x, target):
                with poptorch.Block("A", ipu_id=0):
                    h = torch.relu(self.fc1(x))
                with poptorch.Block("B", ipu_id=0):
                    out = self.fc2(h)
                return out, torch.nn.functional.cross_entropy(out, target)

        opts = cpu_options()
        opts.Training.gradientAccumulation(3)
        opts.setExecutionStrategy(poptorch.SerialPhasedExecution(
            poptorch.Phase("A"), poptorch.Phase("B")))
        self.assertEqual(opts.toDict()["setExecutionStrategy"],
                         "SerialPhasedExecution")
        pm = self.train_pipelined(WithBlocks(), opts)
        g = _lib.core.popc_model_graph(pm._popc.handle)
        phases = {}
        for n in range(_lib.core.popc_graph_n_nodes(g)):
            name = _lib.core.popc_graph_node_name(g, n).decode()
            if name.endswith("Gemm"):
                a = _lib.core.popc_graph_node_annotations(g, n)
                phases[name.split("/")[-2]] = a.phase
        self.assertEqual(phases, {"fc1": 0, "fc2": 1})

    def test_marks_only_while_tracing(self):
        before = len(_marks._marks)
        with poptorch.Block("eager"):
            pass
        self.assertEqual(len(_marks._marks), before)


if __name__ == "__main__":
    main()
