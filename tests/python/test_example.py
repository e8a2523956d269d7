"""examples/fashion_mnist.py, the Fashion-MNIST example through
popc.poptorch, on subsets of the data: the MLP, the CNN and the 2-IPU
BeginBlock variant each train one epoch and classify the test images well
above chance (10%): over 70% (MLP), 50% (CNN on 2000 images) and 60% (2
IPUs, which take a third of the steps)."""
import os
import re
import subprocess
import sys
import unittest

from common import main

EXAMPLE = os.path.join(os.environ["POPC_SRCDIR"], "examples",
                       "fashion_mnist.py")
DATA = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


class Example(unittest.TestCase):
    def accuracy(self, *args):
        out = subprocess.run([sys.executable, EXAMPLE, "--epochs", "1"] +
                             list(args), capture_output=True, text=True,
                             timeout=600)
        print(out.stdout + out.stderr[-2000:])
        self.assertEqual(out.returncode, 0)
        m = re.search(r"test accuracy: ([0-9.]+)%", out.stdout)
        self.assertIsNotNone(m)
        return float(m.group(1))

    def setUp(self):
        if not os.path.exists(DATA):
            self.skipTest("%s is missing (package dataset-fashion-mnist)" %
                          DATA)

    def test_mlp(self):
        self.assertGreater(self.accuracy("--limit", "6000"), 70.0)

    def test_cnn(self):
        self.assertGreater(self.accuracy("--model", "cnn", "--limit",
                                         "2000"), 50.0)

    def test_mlp_on_two_ipus(self):
        # a third of the optimizer steps (3 micro-batches per step)
        self.assertGreater(self.accuracy("--ipus", "2", "--limit", "6000"),
                           60.0)


if __name__ == "__main__":
    main()
