"""The code of PopTorch's tutorial "From PyTorch to PopTorch", completed
only with its ExampleDataset and ExampleModel and with the import changed
to popc.poptorch: data, the model with its loss, the training loop with
setOptimizer, a custom loss through identity_loss, and inference. The
loss must fall and the trained model must classify the data."""
import torch

import popc.poptorch as poptorch


# ---- the two pieces the tutorial leaves to the reader -----------------------
class ExampleDataset(torch.utils.data.Dataset):
    """Samples of `shape` whose first element's sign and size give the
    label (two classes)."""

    def __init__(self, shape, length):
        super().__init__()
        self._shape = shape
        self._length = length
        generator = torch.Generator().manual_seed(0)
        self._labels = torch.randint(0, 2, (length,), generator=generator)
        self._data = torch.rand([length] + list(shape), generator=generator)
        self._data += self._labels.view([length] + [1] * len(shape)) * 2 - 1

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        return self._data[index], int(self._labels[index])


class ExampleModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(1, 8)
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)

# ---- 3.1 Preparing your data (PopTorch) -------------------------------------
# Set up the PyTorch DataLoader to load that much data at each iteration
opts = poptorch.Options()
opts.deviceIterations(10)
training_data = poptorch.DataLoader(options=opts,
                                    dataset=ExampleDataset(shape=[1],
                                                           length=20000),
                                    batch_size=10,
                                    shuffle=True,
                                    drop_last=True)


# ---- 3.2.1 Training ---------------------------------------------------------
class ExampleModelWithLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = ExampleModel()

    def forward(self, input, target):
        out = self.model(input)

        return (torch.nn.functional.softmax(out),
                torch.nn.CrossEntropyLoss(reduction="mean")(out, target))


model = ExampleModelWithLoss()
model.train()

optimizer = torch.optim.AdamW(model.parameters(), lr=0.001)

# Wrap the model in a PopTorch training wrapper
poptorch_model = poptorch.trainingModel(model,
                                        options=opts,
                                        optimizer=optimizer)

# ---- 3.3 The training loop, with 3.5's setOptimizer -------------------------
losses = []
momentum_loss = None
switched = False
for batch, target in training_data:
    # Performs forward pass, loss function evaluation,
    # backward pass and weight update in one go on the device.
    _, loss = poptorch_model(batch, target)
    losses.append(float(loss))

    if momentum_loss is None:
        momentum_loss = loss
    else:
        momentum_loss = momentum_loss * 0.95 + loss * 0.05

    # Optimizer can be updated via setOptimizer.
    if momentum_loss < 0.1 and not switched:
        poptorch_model.setOptimizer(
            torch.optim.AdamW(model.parameters(), lr=0.0001))
        switched = True

checks = failures = 0


def check(ok, what):
    global checks, failures
    checks += 1
    failures += not ok
    print("%s: %s" % ("ok" if ok else "FAIL", what))


check(len(losses) == 20000 // 100,
      "one run per combined batch of 100: %d runs" % len(losses))
first = sum(losses[:10]) / 10
last = sum(losses[-10:]) / 10
check(last < first / 4, "the loss falls: %.4f -> %.4f" % (first, last))
check(switched, "the smoothed loss fell below 0.1 and setOptimizer took "
      "the new AdamW")

# ---- 3.4 Multiple/custom losses (syntax completed: colon, `output`) ---------


def custom_loss(output, target):
    loss1 = torch.nn.functional.nll_loss(output, target)
    loss2 = torch.nn.functional.nll_loss(output, target) * 5.0
    return poptorch.identity_loss(loss1 + loss2, reduction='none')


class ExampleModelWithCustomLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = ExampleModel()

    def forward(self, input, target):
        out = torch.nn.functional.log_softmax(self.model(input), dim=1)
        return out, custom_loss(out, target)


custom = ExampleModelWithCustomLoss()
custom_opts = poptorch.Options()
custom_opts.deviceIterations(10)
custom_model = poptorch.trainingModel(
    custom, options=custom_opts,
    optimizer=torch.optim.SGD(custom.parameters(), lr=0.01))
custom_losses = []
for i, (batch, target) in enumerate(training_data):
    _, loss = custom_model(batch, target)
    custom_losses.append(float(loss))
    if i == 30:
        break
check(custom_losses[-1] < custom_losses[0],
      "identity_loss(loss1 + loss2, 'none') trains: %.4f -> %.4f" %
      (custom_losses[0], custom_losses[-1]))

# ---- 3.2.2 Inference --------------------------------------------------------
poptorch_model = poptorch.inferenceModel(model)
data = ExampleDataset(shape=[1], length=1000)
x = torch.stack([data[i][0] for i in range(1000)])
y = torch.tensor([data[i][1] for i in range(1000)])
probabilities, _ = poptorch_model(x, y)
accuracy = float((probabilities.argmax(1) == y).float().mean())
check(accuracy > 0.95, "the trained model classifies %.1f%% of 1000 "
      "samples" % (100 * accuracy))
print("%d checks, %d failed" % (checks, failures))
raise SystemExit(1 if failures else 0)
