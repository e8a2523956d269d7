/* lstm_gemm_priv.h - the sgemm path of LSTM and popc::LSTMGrad
** (lstm_gemm.c) for the form torch.nn.LSTM exports. Module-internal. */
#ifndef POPC_OPS_NN_LSTM_GEMM_PRIV_H
#define POPC_OPS_NN_LSTM_GEMM_PRIV_H

#include "ops/nn/recurrent_priv.h"

/* Whether node p with inputs in[0..n_in) takes the sgemm path: LSTM with
** the default activations, no clip, no input_forget, no peepholes and no
** sequence_lens. */
int rnn_lstm_gemm_fits(const rnn_p *p, const popc_view *in, int n_in);

/* Units of LSTM's forward (blocks of batch entries). */
int rnn_lstm_gemm_units(const rnn_p *p);

/* LSTM's outputs (Y, Y_h, Y_c, whichever are wanted), the units of part
** kc->part of kc->n_parts. */
popc_status rnn_lstm_gemm_forward(const popc_kernel_ctx *kc, const rnn_p *p);

/* popc::LSTMGrad's outputs (dX, dW, dR, dB, d initial_h, d initial_c,
** dP = 0). */
popc_status rnn_lstm_gemm_grad(const popc_kernel_ctx *kc, const rnn_p *p);

#endif /* POPC_OPS_NN_LSTM_GEMM_PRIV_H */
