"""poptorch.DataLoader: combined batches of batch_size x deviceIterations
x (replicationFactor / input group size) x gradientAccumulation samples,
shuffling and drop_last as torch's, the asynchronous modes giving the same
batches, and a model consuming them."""
import unittest

import torch

import popc.poptorch as poptorch
from common import cpu_options, main, Classifier


class Numbers(torch.utils.data.Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return torch.tensor([float(i)] * 6), i % 3


class DataLoader(unittest.TestCase):
    def test_combined_batch(self):
        o = poptorch.Options()
        o.deviceIterations(3).replicationFactor(2)
        o.Training.gradientAccumulation(2)
        loader = poptorch.DataLoader(o, Numbers(), batch_size=2)
        self.assertEqual(loader.combinedBatchSize, 2 * 3 * 2 * 2)
        batches = list(loader)
        self.assertEqual(len(batches), 100 // 24)     # drop_last
        self.assertEqual(tuple(batches[0][0].shape), (24, 6))
        self.assertEqual([int(v) for v in batches[0][0][:, 0]],
                         list(range(24)), "in order without shuffle")
        o2 = poptorch.Options()
        o2.replicationFactor(4).inputReplicaGrouping(
            2, poptorch.CommGroupType.Consecutive)
        self.assertEqual(poptorch.DataLoader(o2, Numbers(), batch_size=5)
                         .combinedBatchSize, 10)
        keep = poptorch.DataLoader(poptorch.Options(), Numbers(),
                                   batch_size=30, drop_last=False)
        self.assertEqual([len(b[1]) for b in keep], [30, 30, 30, 10])

    def test_shuffle_and_async_modes(self):
        o = poptorch.Options().deviceIterations(2)
        for mode in (poptorch.DataLoaderMode.Async,
                     poptorch.DataLoaderMode.AsyncRebatched):
            torch.manual_seed(7)
            sync = [b[1].tolist() for b in poptorch.DataLoader(
                o, Numbers(), batch_size=5, shuffle=True)]
            torch.manual_seed(7)
            other = [b[1].tolist() for b in poptorch.DataLoader(
                o, Numbers(), batch_size=5, shuffle=True, mode=mode)]
            self.assertEqual(sync, other, mode)
        self.assertNotEqual(sync[0], [i % 3 for i in range(10)])
        workers = [b[0][:, 0].tolist() for b in poptorch.DataLoader(
            o, Numbers(), batch_size=5, num_workers=2)]
        self.assertEqual(workers[1], [float(i) for i in range(10, 20)])

    def test_a_model_runs_on_its_batches(self):
        o = cpu_options()
        o.deviceIterations(4)
        torch.manual_seed(0)
        model = Classifier()
        pm = poptorch.trainingModel(model, options=o)
        runs = 0
        for x, y in poptorch.DataLoader(o, Numbers(), batch_size=5):
            out, loss = pm(x / 100, y)
            runs += 1
        self.assertEqual(runs, 100 // 20)
        self.assertEqual(tuple(out.shape), (5, 3), "Final: last batch")

    def test_options_must_be_options(self):
        with self.assertRaises(TypeError):
            poptorch.DataLoader(None, Numbers())


if __name__ == "__main__":
    main()
