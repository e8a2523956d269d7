/* recurrent_priv.h - what the RNN, GRU and LSTM files share: the parsed
** attributes of a node, and one time step of one cell, forward and
** backward, so that the forward kernel and the gradient kernel run the
** same arithmetic (the gradient recomputes each step from the saved
** states instead of keeping every gate of every step).
**
** Gates are ordered as ONNX orders them (LSTM i, o, f, c; GRU z, r, h).
** Module-internal (hidden symbols).
*/
#ifndef POPC_OPS_NN_RECURRENT_PRIV_H
#define POPC_OPS_NN_RECURRENT_PRIV_H

#include <stdint.h>

#include "popc/plugin.h"

enum { RNN_K_RNN, RNN_K_GRU, RNN_K_LSTM };

extern const char *const rnn_op_names[3];
extern const int rnn_n_gates[3];
extern const int rnn_n_act[3]; /* activations per direction */

typedef struct rnn_act {
    int kind;
    double alpha, beta;
} rnn_act;

typedef struct rnn_p {
    int kind, dirs, layout, reverse;
    int64_t seq, batch, in, hidden;
    double clip;
    int input_forget, lbr;
    rnn_act acts[6];
} rnn_p;

/* Reads the attributes and checks X, W and R (in[0..2]). */
popc_status rnn_parse(const char *node, int kind, const popc_view *in,
                      int n_in, const popc_attrs *a, rnn_p *p);

/* One direction's weights: slices of W, R, B and P. */
typedef struct rnn_cell {
    const rnn_p *p;
    const float *W, *R;   /* [G*H, in], [G*H, H] */
    const float *Wb, *Rb; /* [G*H] each, or NULL */
    const float *P;       /* LSTM peepholes [3*H] (i, o, f), or NULL */
    const rnn_act *f;     /* this direction's activations */
} rnn_cell;

/* Direction d's slices of the node's inputs (B, P may be NULL). */
void rnn_cell_init(rnn_cell *c, const rnn_p *p, int d, const float *W,
                   const float *R, const float *B, const float *P);

/* Scratch of one step: rnn_step_doubles(p) doubles. */
int64_t rnn_step_doubles(const rnn_p *p);

/* One step from state (h, c) on input x: writes the new state to
** (hn, cn) (cn only for LSTM) and keeps the step's pre-activations in
** scratch for rnn_cell_back. */
void rnn_cell_step(const rnn_cell *c, const float *x, const double *h,
                   const double *cs, double *hn, double *cn, double *scratch);

/* Gradient sums of one direction, in double. */
typedef struct rnn_grads {
    double *W, *R, *Wb, *Rb, *P; /* shaped like the cell's slices */
} rnn_grads;

/* Back through the step that rnn_cell_step just computed into scratch:
** dh and dc (LSTM) are the gradients of the new state; adds to g and to
** dx (in floats of x's row), writes the gradients of the old state to
** dh_prev and dc_prev. work holds rnn_step_doubles(p) doubles. */
void rnn_cell_back(const rnn_cell *c, const float *x, const double *h,
                   const double *cs, const double *cn, const double *scratch,
                   const double *dh, const double *dc, rnn_grads *g,
                   double *dx, double *dh_prev, double *dc_prev,
                   double *work);

/* Offsets of state [d, b] and of output Y[t, d, b] by layout. */
int64_t rnn_state_at(const rnn_p *p, int d, int64_t b);
int64_t rnn_y_at(const rnn_p *p, int64_t t, int d, int64_t b);
/* Offset of X[t, b]. */
int64_t rnn_x_at(const rnn_p *p, int64_t t, int64_t b);
/* Steps of batch entry b (sequence_lens, at most seq). */
int64_t rnn_len(const rnn_p *p, const popc_view *lens, int64_t b);

/* The gradient builder of an RNN, GRU or LSTM node (kind RNN_K_*), and
** the registration of the gradient ops it adds (popc::RNNGrad, GRUGrad,
** LSTMGrad). */
popc_status rnn_grad_kind(popc_grad_ctx *gc, int kind);
popc_status rnn_register_grad(const popc_host *h, popc_registrar *r);

#endif /* POPC_OPS_NN_RECURRENT_PRIV_H */
