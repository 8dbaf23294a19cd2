"""Newton's ``diffsim_ball`` example without graph capture, so ``python -m warp_zerostore check`` can see its
launches: ``python -m warp_zerostore check -m helpers.newton_ball_uncaptured --viewer null --num-frames 1``
(from tests/). The example's own gradient check runs first, then ``--num-frames`` training steps."""

import newton.examples
from newton.examples.diffsim import example_diffsim_ball as example


def no_capture(self):
    self.graph = None  # the example then runs forward_backward() eagerly in step()


example.Example.capture = no_capture

if __name__ == "__main__":
    parser = example.Example.create_parser()
    viewer, args = newton.examples.init(parser)
    ball = example.Example(viewer, args)
    ball.check_grad()
    newton.examples.run(ball, args)
