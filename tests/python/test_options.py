"""poptorch.Options on popc's options: every category's setters reach
popc's option table, calls chain, typos and bad values raise PopTorch's
errors, options freeze when a model uses them, and the batching options
change what a model computes."""
import copy
import unittest

import torch

import popc.poptorch as poptorch
from common import cpu_options, main, Classifier, MLP


class Options(unittest.TestCase):
    def test_every_category_reaches_popc(self):
        o = poptorch.Options()
        o.deviceIterations(4).replicationFactor(2).outputMode(
            poptorch.OutputMode.EveryN, 2)
        o.Training.gradientAccumulation(3)
        o.Training.accumulationAndReplicationReductionType(
            poptorch.ReductionType.Sum)
        o.Precision.setPartialsType(torch.half)
        o.TensorLocations.numIOTiles(32)
        o.TensorLocations.setWeightLocation(
            poptorch.TensorLocationSettings().useOnChipStorage(False))
        o.Distributed.configureProcessId(1, 2)
        o.Jit.traceModel(False)
        o.setExecutionStrategy(poptorch.ShardedExecution())
        o.setAvailableMemoryProportion({"IPU0": 0.5})
        o.anchorTensor("h", "fc1/Gemm_output")
        d = o.toDict()
        expect = {"deviceIterations": "4", "replicationFactor": "2",
                  "outputMode": "EveryN", "outputReturnPeriod": "2",
                  "Training.gradientAccumulation": "3",
                  "Training.accumulationAndReplicationReductionType": "Sum",
                  "Precision.setPartialsType": "half",
                  "TensorLocations.numIOTiles": "32",
                  "TensorLocations.setWeightLocation.useOnChipStorage":
                      "false",
                  "Distributed.processId": "1",
                  "Distributed.numProcesses": "2",
                  "Jit.traceModel": "false",
                  "setExecutionStrategy": "ShardedExecution",
                  "setAvailableMemoryProportion": "IPU0=0.5",
                  "anchorTensor": "h=fc1/Gemm_output"}
        for name, value in expect.items():
            self.assertEqual(d[name], value, name)
        self.assertEqual(o.device_iterations, 4)
        self.assertEqual(o.Training.gradient_accumulation, 3)
        self.assertEqual(o.output_mode, poptorch.OutputMode.EveryN)

    def test_each_setter_of_the_reference(self):
        """Every Options method of PopTorch's API reference, called as a
        user calls it, sets popc's option."""
        P = poptorch
        calls = [
            (lambda o: o.autoRoundNumIPUs(True), "autoRoundNumIPUs", "true"),
            (lambda o: o.broadcastBuffers(False), "broadcastBuffers",
             "false"),
            (lambda o: o.connectionType(P.ConnectionType.OnDemand),
             "connectionType", "OnDemand"),
            (lambda o: o.disableModuleNamescope(), "disableModuleNamescope",
             "true"),
            (lambda o: o.enableExecutableCaching("/tmp/cache"),
             "enableExecutableCaching", "/tmp/cache"),
            (lambda o: o.enableProfiling("/tmp/prof"), "enableProfiling",
             "/tmp/prof"),
            (lambda o: o.enableStableNorm(True), "enableStableNorm", "true"),
            (lambda o: o.enableSyntheticData(True), "enableSyntheticData",
             "true"),
            (lambda o: o.inputReplicaGrouping(
                1, P.CommGroupType.Orthogonal), "inputReplicaGrouping.type",
             "Orthogonal"),
            (lambda o: o.logCycleCount(True), "logCycleCount", "true"),
            (lambda o: o.logDir("/tmp/logs"), "logDir", "/tmp/logs"),
            (lambda o: o.maxRepeatLogs(7), "maxRepeatLogs", "7"),
            (lambda o: o.modelName("m"), "modelName", "m"),
            (lambda o: o.randomSeed(42), "randomSeed", "42"),
            (lambda o: o.relaxOptimizerAttributesChecks(),
             "relaxOptimizerAttributesChecks", "true"),
            (lambda o: o.sourceLocationExcludes(["a", "b"]),
             "sourceLocationExcludes", "a,b"),
            (lambda o: o.appendToLocationExcludes("c"),
             "sourceLocationExcludes", "c"),
            (lambda o: o.syncPattern(P.SyncPattern.SinglePipeline),
             "syncPattern", "SinglePipeline"),
            (lambda o: o.useIpuId(3), "useIpuId", "3"),
            (lambda o: o.useIpuModel(True), "useIpuModel", "true"),
            (lambda o: o.useOfflineIpuTarget(21), "useOfflineIpuTarget",
             "21"),
            (lambda o: o.Distributed.disable(), "Distributed.numProcesses",
             "1"),
            (lambda o: o.Distributed.setEnvVarNames("N", "I"), None, None),
            (lambda o: o.Precision.enableFloatingPointExceptions(True),
             "Precision.enableFloatingPointExceptions", "true"),
            (lambda o: o.Precision.enableStochasticRounding(True),
             "Precision.enableStochasticRounding", "true"),
            (lambda o: o.Precision.halfFloatCasting(
                P.HalfFloatCastingBehavior.HalfUpcastToFloat),
             "Precision.halfFloatCasting", "HalfUpcastToFloat"),
            (lambda o: o.Precision.runningStatisticsAlwaysFloat(False),
             "Precision.runningStatisticsAlwaysFloat", "false"),
            (lambda o: o.TensorLocations.setActivationLocation(
                P.TensorLocationSettings().minElementsForOffChip(64)),
             "TensorLocations.setActivationLocation.minElementsForOffChip",
             "64"),
            (lambda o: o.TensorLocations.setOptimizerLocation(
                P.TensorLocationSettings().useIOTilesToLoad()),
             "TensorLocations.setOptimizerLocation.useIOTilesToLoad",
             "true"),
            (lambda o: o.TensorLocations.setAccumulatorLocation(
                P.TensorLocationSettings().useReplicatedTensorSharding()
                .minElementsForReplicatedTensorSharding(8)),
             "TensorLocations.setAccumulatorLocation."
             "minElementsForReplicatedTensorSharding", "8"),
            (lambda o: o.Training.setAutomaticLossScaling(True),
             "Training.setAutomaticLossScaling", "true"),
            (lambda o: o.Training.setConvolutionDithering(True),
             "Training.setConvolutionDithering", "true"),
            (lambda o: o.Training.
             setMeanAccumulationAndReplicationReductionStrategy(
                 P.MeanReductionStrategy.Running),
             "Training.meanAccumulationAndReplicationReductionStrategy",
             "Running"),
        ]
        for call, key, value in calls:
            o = poptorch.Options()
            self.assertIs(call(o) is None, False, key)
            if key is not None:
                self.assertEqual(o.toDict()[key], value, key)
        with self.assertRaises(AttributeError):
            poptorch.TensorLocationSettings().useOffChip()

    def test_typos_list_the_valid_names(self):
        o = poptorch.Options()
        with self.assertRaises(AttributeError) as cm:
            o.deviceIteration(2)
        msg = str(cm.exception)
        self.assertIn("'Options' object has no attribute 'deviceIteration'",
                      msg)
        self.assertIn("deviceIterations", msg)
        self.assertIn("replicationFactor", msg)
        with self.assertRaises(AttributeError) as cm:
            o.Training.gradientAcumulation(2)
        self.assertIn("'_TrainingOptions' object has no attribute "
                      "'gradientAcumulation'", str(cm.exception))
        self.assertIn("gradientAccumulation", str(cm.exception))
        for category in ("Precision", "TensorLocations", "Distributed",
                         "Jit"):
            with self.assertRaises(AttributeError):
                getattr(getattr(o, category), "nonsense")

    def test_bad_values_raise_popc_texts(self):
        o = poptorch.Options()
        with self.assertRaises(ValueError) as cm:
            o.deviceIterations(0)
        self.assertIn("must be >= 1", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            o.TensorLocations.numIOTiles(33)
        self.assertIn("numIOTiles must be an even number between 32 and "
                      "192", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            o.Jit.traceModel(True)
        self.assertIn("no longer supported", str(cm.exception))

    def test_options_freeze_and_clone(self):
        o = cpu_options()
        pm = poptorch.inferenceModel(MLP(), options=o)
        with self.assertRaises(AttributeError) as cm:
            o.deviceIterations(2)
        self.assertIn("Can't modify frozen Options", str(cm.exception))
        c = o.clone()
        c.deviceIterations(2)
        self.assertEqual(c.device_iterations, 2)
        self.assertIs(pm.options, o)

    def test_load_from_file(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("deviceIterations(5)\n# a comment\n"
                    "Training.gradientAccumulation(2)\n")
            f.flush()
            o = poptorch.Options().loadFromFile(f.name)
        self.assertEqual(o.device_iterations, 5)
        self.assertEqual(o.Training.gradient_accumulation, 2)

    def test_inference_gradient_accumulation_is_refused(self):
        o = cpu_options()
        o.Training.gradientAccumulation(2)
        pm = poptorch.inferenceModel(MLP(), options=o)
        with self.assertRaises(poptorch.Error) as cm:
            pm(torch.randn(4, 6))
        self.assertIn("gradientAccumulation to 1", str(cm.exception))

    def test_output_modes_shape_the_outputs(self):
        torch.manual_seed(0)
        model = MLP()
        x = torch.randn(12, 6)
        with torch.no_grad():
            expected = model(x)
        o = cpu_options().deviceIterations(3)
        out = poptorch.inferenceModel(model, options=o)(x)
        self.assertEqual(tuple(out.shape), (12, 3))
        self.assertLessEqual(float((out - expected).abs().max()), 1e-6)
        o = cpu_options().deviceIterations(3).outputMode(
            poptorch.OutputMode.Final)
        out = poptorch.inferenceModel(model, options=o)(x)
        self.assertEqual(tuple(out.shape), (4, 3))
        self.assertLessEqual(float((out - expected[8:]).abs().max()), 1e-6)
        with self.assertRaises(poptorch.Error) as cm:
            poptorch.inferenceModel(model, options=cpu_options().
                                    deviceIterations(5))(x)
        self.assertIn("Invalid batch dimension", str(cm.exception))

    def test_gradient_accumulation_matches_pytorch(self):
        torch.manual_seed(0)
        model = Classifier()
        reference = copy.deepcopy(model)
        o = cpu_options()
        o.deviceIterations(2).Training.gradientAccumulation(2)
        pm = poptorch.trainingModel(model, options=o,
                                    optimizer=torch.optim.SGD(
                                        model.parameters(), lr=0.1))
        x = torch.randn(16, 6)
        y = torch.randint(0, 3, (16,))
        pm(x, y)
        opt = torch.optim.SGD(reference.parameters(), lr=0.1)
        for step in range(2):       # 2 device iterations of 2 x 4 rows
            opt.zero_grad()
            for micro in range(2):
                rows = slice(step * 8 + micro * 4, step * 8 + micro * 4 + 4)
                _, loss = reference(x[rows], y[rows])
                (loss / 2).backward()   # Mean over accumulation steps
            opt.step()
        for name, value in model.state_dict().items():
            diff = (value - reference.state_dict()[name]).abs().max()
            self.assertLessEqual(float(diff), 1e-6, name)

    def test_module_level_helpers(self):
        o = poptorch.Options()
        self.assertTrue(o.defaultOutputMode())
        o.outputMode(poptorch.OutputMode.All)
        self.assertFalse(o.defaultOutputMode())
        self.assertIsInstance(o.Training, poptorch.options._TrainingOptions)
        self.assertIsInstance(o.Precision,
                              poptorch.options._PrecisionOptions)
        self.assertIsInstance(o.TensorLocations,
                              poptorch.options._TensorLocationOptions)
        self.assertIsInstance(o.Distributed,
                              poptorch.options._DistributedOptions)
        self.assertIsInstance(o.Jit, poptorch.options._JitOptions)
        from popc import _lib
        level = _lib.core.popc_log_level()
        poptorch.setLogLevel("ERR")
        self.assertEqual(_lib.core.popc_log_level(), _lib.LOG_ERR)
        with self.assertRaises(ValueError):
            poptorch.setLogLevel("LOUD")
        _lib.core.popc_log_set_level(level)
        self.assertFalse(poptorch.ipuHardwareIsAvailable())
        self.assertEqual(poptorch.ipuHardwareVersion(), 2)
        with self.assertRaises(NotImplementedError):
            poptorch.profiling.Channel("x")


if __name__ == "__main__":
    main()
